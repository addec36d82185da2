"""A full evaluation run with a scripted local model: every stage answered plausibly.

Usage:
    .venv/bin/python bench/eval_scripted.py [--bench socialmem] [--data ../shared/data/socialmembench/networks]
        [--out runs/socialmem-scripted] [--systems speakermem,bm25,embed,full-context] [--concurrency 2]
        [--prefix eval-scripted-] [--ablations] [--grid] [--cleanup]

Starts tests/scripted_llm.ScriptedLLM (a local OpenAI-compatible server) and points the
Writer, the answer model and the judge at it (GRAPHMEM_LLM_* / GRAPHMEM_WRITER_* /
GRAPHMEM_JUDGE_*). The scripted model answers by simple deterministic rules, so the numbers
say nothing about quality; the run shows that the whole protocol completes end to end -
ingest, Writer derivation, Project / Select / Sufficiency, answers, binary judge, SocialMem
rubric, token accounting - and writes the combined report (report.md, summary.json, PNGs)
for graphmem and every baseline into --out.

graphmem's units go into groups named ``<prefix><unit id>`` so that the scripted Writer's
records never land in the natural benchmark groups; --cleanup deletes those groups at the end.
Requires the local Neo4j for the speakermem system.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from graphmem.eval import prompts as eval_prompts  # noqa: E402
from graphmem.query.prompts import MARKERS  # noqa: E402
from graphmem.derived.writer import WRITER_SYSTEM_PROMPT  # noqa: E402
from tests.scripted_llm import Reply, ScriptedLLM  # noqa: E402

_WORD = re.compile(r"\w+")
_EXCERPT = re.compile(r"^\s*\d+\. \(([^@]+?) @ [^,]*,(?: [^,]*,)? msg [^)]*\) (.*)$", re.MULTILINE)


def _system(body: dict) -> str:
    return "\n".join(m["content"] for m in body["messages"] if m["role"] == "system")


def _user(body: dict) -> str:
    return "\n".join(m["content"] for m in body["messages"] if m["role"] == "user")


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)}


def _overlap(a: str, b: str) -> float:
    wa, wb = _words(a), _words(b)
    return len(wa & wb) / max(1, len(wb))


def writer(body: dict) -> Reply:
    text = _user(body)
    lines = re.findall(r"^\[[^\]]*\] ([^:]+): (.*)$", text, re.MULTILINE)
    seen: dict[str, str] = {}
    for speaker, msg in lines:
        seen.setdefault(speaker, msg)
    actions = [
        {"action": "ADD", "owner": s, "source": s, "layer": "per_speaker_core", "utype": "stance",
         "content": f"{s} talked about {' '.join(msg.split()[:8])}"}
        for s, msg in seen.items()
    ]
    if lines:
        s, msg = lines[-1]
        actions.append({"action": "ADD", "owner": "GROUP", "source": s, "layer": "group_interaction",
                        "utype": "decision", "content": f"the group discussed {' '.join(msg.split()[:8])}"})
    return Reply.json({"actions": actions or [{"action": "NOOP"}]})


def project(body: dict) -> Reply:
    q = re.search(r"Question: (.*)", _user(body))
    words = [w for w in _WORD.findall(q.group(1) if q else "") if len(w) > 3][:4]
    return Reply.json({"issue": " ".join(words) or "the matter", "rows": ["ALL", "GROUP"], "tense": "head"})


def select(body: dict) -> Reply:
    n = len(re.findall(r"^\[\d+\]", _user(body), re.MULTILINE))
    return Reply.json({"ranked": list(range(1, n + 1)), "expand": []})


def answer(body: dict) -> Reply:
    text = _user(body)
    options = dict(re.findall(r"^([A-D])\. (.+)$", text.split("\n\n")[0], re.MULTILINE))
    excerpts = _EXCERPT.findall(text)
    if options:
        speakers = [s.strip() for s, _ in excerpts]
        for s in speakers:
            for letter, name in options.items():
                if name.strip() == s:
                    return Reply.text(f"{letter}. {name}")
        letter = sorted(options)[0]
        return Reply.text(f"{letter}. {options[letter]}")
    if not excerpts:
        return Reply.text("There is no information available in the conversation to answer this question.")
    speaker, said = excerpts[0]
    return Reply.text(f"{speaker.strip()} said: {said[:200]}")


def judge(body: dict) -> Reply:
    text = _user(body)
    gold = re.search(r"Gold Answer: (.*)\nAgent Answer:", text, re.DOTALL)
    agent = re.search(r"Agent Answer: (.*)$", text, re.DOTALL)
    score = _overlap(agent.group(1) if agent else "", gold.group(1) if gold else "")
    verdict = "Correct" if score >= 0.3 else "Incorrect"
    return Reply.text(f"The agent answer shares {score:.0%} of the gold answer's words.\nFinal: {verdict}")


def rubric(body: dict) -> Reply:
    text = _user(body)
    gold = re.search(r"Gold answer: (.*)\nGenerated answer:", text, re.DOTALL)
    gen = re.search(r"Generated answer: (.*)\n\nReply with JSON", text, re.DOTALL)
    score = round(min(1.0, 2 * _overlap(gen.group(1) if gen else "", gold.group(1) if gold else "")), 2)
    return Reply.json({"score": score, "rationale": "word overlap with the gold answer (scripted)"})


def start_server() -> ScriptedLLM:
    server = ScriptedLLM(model="scripted-eval").start()
    server.route(server.system_contains(WRITER_SYSTEM_PROMPT[:60]), writer)
    server.route(server.system_contains(MARKERS["project"]), project)
    server.route(server.system_contains(MARKERS["select"]), select)
    server.route(server.system_contains(MARKERS["sufficiency"]), Reply.json({"enough": True, "ask": ""}))
    server.route(server.system_contains(MARKERS["answer"]), answer)
    server.route(server.system_contains(eval_prompts.MARKERS["baseline_answer"]), answer)
    server.route(server.system_contains(eval_prompts.MARKERS["judge"]), judge)
    server.route(server.system_contains(eval_prompts.MARKERS["rubric"]), rubric)
    return server


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", default="socialmem")
    ap.add_argument("--data", type=Path,
                    default=Path(__file__).resolve().parents[2] / "shared" / "data" / "socialmembench" / "networks")
    ap.add_argument("--out", type=Path, default=Path("runs/socialmem-scripted"))
    ap.add_argument("--systems", default="speakermem,bm25,embed,full-context")
    ap.add_argument("--prefix", default="eval-scripted-")
    ap.add_argument("--concurrency", type=int, default=2)
    ap.add_argument("--ablations", action="store_true", help="also graphmem w/o S1, S2, S2-group, S2-person")
    ap.add_argument("--grid", action="store_true", help="also the App. H grid: S1 k 5,10,20 x S2 k 2,4,6, no ASK")
    ap.add_argument("--cleanup", action="store_true", help="delete the prefixed groups at the end")
    args = ap.parse_args()

    server = start_server()
    for prefix in ("GRAPHMEM_LLM", "GRAPHMEM_WRITER", "GRAPHMEM_JUDGE"):
        os.environ.update(server.settings_env(prefix))
    from graphmem.core.config import get_settings

    get_settings.cache_clear()
    from graphmem.cli.eval import execute
    from graphmem.eval.report import write_report

    settings = get_settings()
    try:
        jobs = [(system, None, False, None, None, args.out / system) for system in args.systems.split(",")]
        if args.ablations:
            jobs += [("speakermem", a, False, None, None, args.out / "ablations" / a) for a in ("s1", "s2", "s2-group", "s2-person")]
        if args.grid:
            jobs += [("speakermem", None, True, a, b, args.out / "grid" / f"s1-{a}_s2-{b}")
                     for b in (2, 4, 6) for a in (5, 10, 20)]
        for system, ablate, no_ask, s1_k, s2_k, out_dir in jobs:
            t = time.perf_counter()
            outcome = execute(
                bench=args.bench, data=args.data, system=system, questions=None, ablate=ablate, no_ask=no_ask,
                s1_k=s1_k, s2_k=s2_k, recall_n=s1_k, limit=None, units=None, concurrency=args.concurrency,
                group_prefix=args.prefix if system == "speakermem" else "", out_dir=out_dir,
                settings=settings, quiet=True,
            )
            print(f"{str(out_dir.relative_to(args.out)):22s} {outcome.total} questions: {outcome.done} recorded now, "
                  f"{outcome.skipped} already done, {outcome.failed} failed, {outcome.not_applicable} not applicable, "
                  f"{time.perf_counter() - t:.1f} s", flush=True)
        report, summaries = write_report(args.out, n_resamples=settings.eval_bootstrap_resamples,
                                         seed=settings.eval_bootstrap_seed)
    finally:
        chat = server.chat_requests
        server.stop()
    print(f"\nscripted model answered {len(chat)} chat requests")
    print(f"{'run':28s} {'n':>4s} {'Acc.':>6s} {'F1':>6s} {'MeanQ':>6s} {'MeanN':>6s} {'R@10':>6s} {'tokens (App. D)':>16s}")
    for s in summaries:
        sm = s.socialmem
        r10 = s.recall.get("10", {}).get("recall")
        print(f"{s.label:28s} {s.n:4d} {s.accuracy.accuracy if s.accuracy else float('nan'):6.1f} "
              f"{s.token_f1 if s.token_f1 is not None else float('nan'):6.1f} "
              f"{sm.mean_q if sm else float('nan'):6.3f} {sm.mean_n if sm else float('nan'):6.3f} "
              f"{100 * r10 if r10 is not None else float('nan'):6.1f} {s.costs.total:16,d}")
    print(f"report: {report}")
    print(json.dumps({"plots": sorted(p.name for p in args.out.glob('*.png'))}))
    if args.cleanup:
        from graphmem.store.db import Store, open_driver

        driver = open_driver(get_settings())
        store = Store(driver)
        rows = store.read_text("MATCH (g:Group) WHERE g.id STARTS WITH $p RETURN g.id AS id", p=args.prefix)
        from graphmem.groups.service import forget_group

        for r in rows:
            forget_group(store, r["id"])
        driver.close()
        print(f"deleted {len(rows)} group(s) with prefix {args.prefix!r}")


if __name__ == "__main__":
    main()
