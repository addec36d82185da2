"""Does a question in another language find the evidence? (issue 27, item 11)

Usage:
    .venv/bin/python bench/eval_cross_language.py [--k 10]

Hand-written questions over the sample chat (examples/sample_chat.jsonl) and LoCoMo conv-26
(/work/shared/data/locomo/locomo10.json, or GRAPHMEM_LOCOMO), each with its gold evidence
message ids, asked three ways through :func:`graphmem.query.ask` on the local Neo4j:

- ``en``: the English question (the reference);
- ``as asked``: the question in Spanish, French, German, Japanese or Chinese, no answer model
  (what graphmem did before: English-only embedder, word-matching fulltext);
- ``rewritten``: the same question with an answer model set, so ``ask`` rewrites it into the
  group's language first (:mod:`graphmem.query.translate`). The model is the scripted local
  server (tests/scripted_llm.py) answering the rewrite prompt with a hand-written English
  translation (worded differently from the reference where a translator would), so the
  figure is retrieval given a faithful translation, not a model's translation quality; the
  other stages are scripted neutral (Project: all rows, Select: fused order, Sufficiency:
  enough).

Prints, per data set and arm, the share of questions with a gold message among the System 1
top-k excerpts (hit@k) and the mean share of gold messages found (recall@k). Each data set is
loaded into a fresh group, deleted at the end.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from graphmem.core.config import get_settings  # noqa: E402
from graphmem.core.embed import Embedder  # noqa: E402
from graphmem.groups.service import forget_group  # noqa: E402
from graphmem.query import ask, budgets_from  # noqa: E402
from graphmem.query.prompts import MARKERS  # noqa: E402
from graphmem.runtime import Runtime  # noqa: E402
from graphmem.store.db import Store, open_driver  # noqa: E402
from graphmem.verbatim.ingest import ingest_conversations  # noqa: E402
from loaders import load_conversations  # noqa: E402
from tests.scripted_llm import Reply, ScriptedLLM  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

#: (English question, gold message ids, [(language, question, hand-written English rewrite)])
SAMPLE = [
    ("When is Ben's climbing course?", ["s2-04", "s2-05"], [
        ("es", "¿Cuándo es el curso de escalada de Ben?", "When is Ben's climbing class?"),
        ("ja", "ベンのクライミング講習はいつですか？", "When is Ben's climbing course?")]),
    ("Which trail did the family choose for Saturday?", ["s3-01", "s3-05"], [
        ("fr", "Quel sentier la famille a-t-elle choisi pour samedi ?", "Which trail did the family pick for Saturday?"),
        ("zh", "这家人这个周六选择了哪条步道？", "Which trail did the family choose this Saturday?")]),
    ("Why can't Mom do steep climbs?", ["s1-01"], [
        ("de", "Warum kann Mama keine steilen Anstiege machen?", "Why can't Mom do steep ascents?"),
        ("ja", "お母さんはなぜ急な登りができないのですか？", "Why is Mom unable to do steep climbs?")]),
    ("What time do they leave on Saturday?", ["s3-05"], [
        ("es", "¿A qué hora salen el sábado?", "At what time do they leave on Saturday?"),
        ("zh", "他们这个星期六早上几点从家里出发？", "What time do they leave home this Saturday morning?")]),
    ("What does Cara want to bring?", ["s1-06", "s3-03"], [
        ("fr", "Qu'est-ce que Cara veut apporter ?", "What does Cara want to bring along?")]),
    ("What is the family rule for trips?", ["s2-06"], [
        ("de", "Was ist die Familienregel für Ausflüge?", "What is the family rule for outings?"),
        ("ja", "家族旅行のルールは何ですか？", "What is the rule for family trips?")]),
]

CONV26 = [
    ("What did Caroline research?", ["D2:8"], [
        ("es", "¿Qué investigó Caroline?", "What did Caroline look into?")]),
    ("When is Melanie planning on going camping?", ["D2:7"], [
        ("fr", "Quand Melanie prévoit-elle d'aller camper ?", "When does Melanie plan to go camping?")]),
    ("Where did Caroline move from 4 years ago?", ["D3:13", "D4:3"], [
        ("de", "Woher ist Caroline vor 4 Jahren gezogen?", "Where did Caroline move from four years ago?")]),
    ("What do Melanie's kids like?", ["D6:6", "D4:8"], [
        ("ja", "メラニーの子どもたちは何が好きですか？", "What do Melanie's children like?")]),
    ("What books has Melanie read?", ["D7:8", "D6:10"], [
        ("zh", "梅兰妮最近都读过哪些书呢？", "Which books has Melanie read recently?")]),
    ("When did Melanie sign up for a pottery class?", ["D5:4"], [
        ("es", "¿Cuándo se inscribió Melanie en una clase de cerámica?", "When did Melanie enroll in a pottery class?")]),
    ("What career path has Caroline decided to pursue?", ["D4:13", "D1:11"], [
        ("fr", "Quelle carrière Caroline a-t-elle décidé de poursuivre ?", "Which career has Caroline decided to pursue?")]),
    ("When did Caroline go to the LGBTQ support group?", ["D1:3"], [
        ("de", "Wann ist Caroline zur LGBTQ-Selbsthilfegruppe gegangen?", "When did Caroline go to the LGBTQ self-help group?")]),
    ("What does Melanie do to destress?", ["D7:22", "D5:4"], [
        ("ja", "メラニーはストレス解消に何をしていますか？", "What does Melanie do to relieve stress?")]),
    ("Where has Melanie camped?", ["D6:16", "D4:6", "D8:32"], [
        ("zh", "梅兰妮曾经在哪些地方露营过？", "Where has Melanie gone camping?")]),
    ("What is Caroline's relationship status?", ["D3:13", "D2:14"], [
        ("es", "¿Cuál es la situación sentimental de Caroline?", "What is Caroline's romantic situation?")]),
    ("When did Melanie go to the museum?", ["D6:4"], [
        ("ja", "メラニーはいつ博物館に行きましたか？", "When did Melanie go to the museum?")]),
]

_FENCED = re.compile(r"<<<QUESTION [0-9a-f]+>>>\n(.*)\n<<<END QUESTION", re.DOTALL)


def scripted(translations: dict[str, str]) -> ScriptedLLM:
    server = ScriptedLLM()

    def rewrite(body: dict) -> Reply:
        user = "\n".join(m["content"] for m in body["messages"] if m["role"] == "user")
        m = _FENCED.search(user)
        return Reply.text(translations.get(m.group(1) if m else "", ""))

    def project(body: dict) -> Reply:
        user = "\n".join(m["content"] for m in body["messages"] if m["role"] == "user")
        question = user.split("\n", 1)[0].removeprefix("Question: ")
        return Reply.json({"issue": question, "rows": ["ALL"], "tense": "head"})

    server.route(server.system_contains(MARKERS["rewrite"]), rewrite)
    server.route(server.system_contains(MARKERS["project"]), project)
    server.route(server.system_contains(MARKERS["select"]), Reply.json({"ranked": [], "expand": []}))
    server.route(server.system_contains(MARKERS["sufficiency"]), Reply.json({"enough": True, "ask": ""}))
    server.route(server.system_contains(MARKERS["answer"]), Reply.text("ok"))
    return server


def found(result, gold: list[str], k: int) -> tuple[bool, float]:
    top = [e.id for e in result.excerpts][:k]
    hits = [g for g in gold if g in top]
    return bool(hits), len(hits) / len(gold)


def run(name: str, rt_plain: Runtime, rt_model: Runtime, group: str, items, k: int) -> None:
    budgets = budgets_from(rt_plain.settings, s1_k=k, ask_enabled=False)
    arms: dict[str, list[tuple[bool, float]]] = {"en": [], "as asked": [], "rewritten": []}
    per_lang: dict[str, dict[str, list[bool]]] = {}
    rows = []
    for english, gold, variants in items:
        ref = found(ask(rt_plain, group, english, budgets=budgets), gold, k)
        for lang, question, _ in variants:
            plain = ask(rt_plain, group, question, budgets=budgets)
            rewritten = ask(rt_model, group, question, budgets=budgets)
            assert rewritten.search_question, (question, rewritten.note)
            a, b = found(plain, gold, k), found(rewritten, gold, k)
            arms["en"].append(ref)
            arms["as asked"].append(a)
            arms["rewritten"].append(b)
            for arm, v in (("as asked", a), ("rewritten", b)):
                per_lang.setdefault(lang, {}).setdefault(arm, []).append(v[0])
            rows.append((lang, question, ref[0], a[0], b[0], "warned" if "may be missed" in plain.note else "-"))
    n = len(arms["en"])
    print(f"\n{name}: {n} questions, System 1 top-{k}")
    print(f"{'arm':<10} {'hit@k':>7} {'recall@k':>9}")
    for arm, vals in arms.items():
        print(f"{arm:<10} {sum(h for h, _ in vals) / n:7.2f} {sum(r for _, r in vals) / n:9.2f}")
    print("per language (hit@k as asked -> rewritten): " + ", ".join(
        f"{lang} {sum(v['as asked'])}/{len(v['as asked'])} -> {sum(v['rewritten'])}/{len(v['rewritten'])}"
        for lang, v in sorted(per_lang.items())))
    print("warned (as asked, no model): " + f"{sum(r[5] == 'warned' for r in rows)}/{len(rows)}")
    for lang, q, ref, a, b, warned in rows:
        print(f"  {lang} en={'Y' if ref else '-'} asked={'Y' if a else '-'} rewritten={'Y' if b else '-'} {warned:6} {q}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--k", type=int, default=10)
    args = parser.parse_args()
    settings = get_settings()
    store = Store(open_driver(settings))
    embedder = Embedder.from_settings(settings)
    translations = {q: t for items in (SAMPLE, CONV26) for _, _, vs in items for _, q, t in vs}
    server = scripted(translations)
    server.start()
    made: list[str] = []
    try:
        model_settings = settings.model_copy(update={"llm_base_url": server.base_url, "llm_model": server.model,
                                                     "llm_max_retries": 0})
        rt_plain = Runtime(settings, store=store, embedder=embedder)
        rt_model = Runtime(model_settings, store=store, embedder=embedder).with_models(answer=server.chat_model())
        sample = f"xlang-sample-{uuid.uuid4().hex[:8]}"
        made.append(sample)
        ingest_conversations(store, load_conversations(ROOT / "examples" / "sample_chat.jsonl", "jsonl", group=sample),
                             embedder)
        run("sample chat (trail-trip, 18 messages)", rt_plain, rt_model, sample, SAMPLE, args.k)
        locomo = Path(os.environ.get("GRAPHMEM_LOCOMO", "/work/shared/data/locomo/locomo10.json"))
        if locomo.is_file():
            convs = [c for c in load_conversations(locomo, "locomo") if c.group_id == "conv-26"]
            conv = f"xlang-conv26-{uuid.uuid4().hex[:8]}"
            made.append(conv)
            moved = [c.model_copy(update={"group_id": conv, "messages": [m.model_copy(update={"group_id": conv})
                                                                         for m in c.messages]}) for c in convs]
            ingest_conversations(store, moved, embedder)
            run("LoCoMo conv-26 (419 messages)", rt_plain, rt_model, conv, CONV26, args.k)
        else:
            print(f"\n(LoCoMo not found at {locomo}: skipped)")
    finally:
        for gid in made:
            forget_group(store, gid)
        server.stop()
        store.driver.close()


if __name__ == "__main__":
    main()
