"""Latency and model cost of ``ask`` per question on the SocialMemBench networks.

Usage:
    .venv/bin/python bench/bench_ask.py [--data /work/shared/data/socialmembench/networks]
        [--limit N] [--no-ask] [--keep]

What it does:
1. Ingests every network under its own group id ``bench-ask-<network>`` (deleted at the end
   unless --keep) and writes a System 2 memory through graphmem.derived.memory.write_segment: per
   session, one Core record per speaker (their longest message), which UPDATEs that speaker's
   previous record every second session (chains of several states), and one GROUP record.
2. Starts the scripted OpenAI-compatible server (tests/scripted_llm.py) as the answer model: Project
   answers with the deterministic projection, Select keeps the fused order and names one Expand
   anchor, Sufficiency always asks one terse query (so ASK runs), the answerer says "ok".
3. Runs ``ask`` once per question (after one warm-up question) and prints, per stage, the wall
   time with the model's own latency (the HTTP round trip to the scripted server) taken out,
   the number of model calls, and the prompt tokens per stage (the scripted server counts
   whitespace-separated words; an estimate at 4 characters per token is printed beside it);
   then p50/p95 of the non-model part of ``ask``.

On a shared 2-core machine run it with ``OMP_NUM_THREADS=1``: with torch's default of one
thread per core, a one-sentence MiniLM encode competes with every other process and took
~450 ms (p50) instead of ~18 ms when measured here under load.

Requires the local Neo4j (make neo4j). Figures go to stdout; nothing here is a test.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from graphmem.derived import memory  # noqa: E402
from graphmem.core.config import Settings  # noqa: E402
from graphmem.core.config import get_settings  # noqa: E402
from graphmem.store.db import Store, open_driver, quiet_notifications  # noqa: E402
from graphmem.core.embed import Embedder  # noqa: E402
from graphmem.verbatim.ingest import ingest_conversations  # noqa: E402
from graphmem.llm import ChatModel  # noqa: E402
from graphmem.query import ask, read_roster  # noqa: E402
from graphmem.query.project import fallback_issue, fallback_projection  # noqa: E402
from graphmem.query.prompts import MARKERS  # noqa: E402
from loaders import load_conversations, load_questions  # noqa: E402
from graphmem.core.model import Conversation  # noqa: E402
from tests.scripted_llm import Reply, ScriptedLLM  # noqa: E402

STAGES = ("project", "embed", "s1_recall", "select", "expand", "sufficiency", "ask", "rerank", "s2", "compose", "answer")
PREFIX = "bench-ask-"


def pct(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    v = sorted(values)
    i = min(len(v) - 1, max(0, round(q * (len(v) - 1))))
    return v[i]


def delete_group(store: Store, gid: str) -> None:
    from graphmem.groups.service import forget_group

    forget_group(store, gid)


def rename(conv: Conversation, gid: str) -> Conversation:
    msgs = [m.model_copy(update={"group_id": gid}) for m in conv.messages]
    return conv.model_copy(update={"group_id": gid, "messages": msgs})


def write_memory(store: Store, embedder, conv: Conversation) -> int:
    """Per session: a Core record per speaker (UPDATE of their last one every 2nd session) and a
    GROUP record; written through graphmem.derived.memory.write_segment. Returns records written."""
    roster = {p.name: p.id for p in read_roster(store, conv.group_id)}
    by_session: dict[str, list] = {}
    for m in conv.messages:
        by_session.setdefault(m.session, []).append(m)
    heads: dict[str, str] = {}
    written = 0
    for index, (session, msgs) in enumerate(by_session.items(), start=1):
        specs: list[dict[str, Any]] = []
        best: dict[str, Any] = {}
        for m in msgs:
            if m.speaker not in best or len(m.text) > len(best[m.speaker].text):
                best[m.speaker] = m
        for n, (speaker, m) in enumerate(sorted(best.items())):
            pid = roster.get(speaker, m.speaker_id or speaker)
            rid = f"b{index}.{n}"
            supersedes = heads.get(pid) if index % 2 == 0 else None
            specs.append({"id": rid, "owner": pid, "source": pid, "layer": "per_speaker_core", "utype": "stance",
                          "content": f"{speaker}: {m.text[:200]}", "from": [m.id], "ts": m.ts,
                          "supersedes": supersedes})
            heads[pid] = rid
        last = msgs[-1]
        specs.append({"id": f"b{index}.g", "owner": memory.GROUP, "source": roster.get(last.speaker, last.speaker),
                      "layer": "group_interaction", "utype": "decision",
                      "content": f"In {session} the group talked about: {msgs[0].text[:160]}", "from": [msgs[0].id],
                      "ts": last.ts, "supersedes": None})
        vectors = embedder.encode([s["content"] for s in specs])
        records = [
            memory.NewRecord(id=s["id"], layer=s["layer"], utype=s["utype"], content=s["content"], owner=s["owner"],
                             source=s["source"], ts=s["ts"], session=session, from_ids=s["from"],
                             embedding=vectors[i].tolist(), supersedes=s["supersedes"])
            for i, s in enumerate(specs)
        ]
        marker = memory.SegmentMarker(id=f"seg-{index:04d}", index=index, session=session,
                                      message_ids=[m.id for m in msgs])
        memory.write_segment(store, conv.group_id, marker, records)
        written += len(records)
    return written


def scripted_handler(rosters: dict[str, list]) -> Any:
    def handle(body: dict[str, Any]) -> Reply:
        system = next((m["content"] for m in body["messages"] if m["role"] == "system"), "")
        user = next((m["content"] for m in body["messages"] if m["role"] == "user"), "")
        if MARKERS["project"] in system:
            question = user.split("\n", 1)[0].removeprefix("Question: ")
            gid = next(iter(rosters))  # projection only needs names; rosters are looked up below
            for g, roster in rosters.items():
                if all(p.name in user for p in roster):
                    gid = g
                    break
            p = fallback_projection(question, rosters[gid])
            names = {p_.id: p_.name for p_ in rosters[gid]}
            rows = [names.get(r, r) for r in p.rows]
            return Reply.json({"issue": p.issue, "rows": rows, "tense": p.tense})
        if MARKERS["select"] in system:
            n = sum(1 for line in user.splitlines() if line.startswith("["))
            return Reply.json({"ranked": list(range(1, n + 1)), "expand": [1] if n else []})
        if MARKERS["sufficiency"] in system:
            question = user.split("\n", 1)[0].removeprefix("Question: ")
            words = fallback_issue(question, []).split()[:3]
            return Reply.json({"enough": False, "ask": " ".join(words) or "plans"})
        return Reply.text("ok")

    return handle


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=Path("/work/shared/data/socialmembench/networks"))
    ap.add_argument("--limit", type=int, default=0, help="questions to run (0 = all)")
    ap.add_argument("--no-ask", action="store_true", help="switch Sufficiency/ASK off")
    ap.add_argument("--keep", action="store_true", help="keep the bench groups afterwards")
    ap.add_argument("--reuse", action="store_true", help="reuse bench groups kept by an earlier --keep run")
    args = ap.parse_args()

    quiet_notifications()
    driver = open_driver(get_settings())
    store = Store(driver)
    embedder = Embedder.from_settings(get_settings())
    convs = load_conversations(args.data, "socialmem")
    questions = load_questions(args.data, "socialmem")
    if args.limit:
        questions = questions[: args.limit]
    gids = {c.group_id: PREFIX + c.group_id for c in convs}
    try:
        t = time.perf_counter()
        records = 0
        for c in convs:
            if args.reuse and store.read("groups/get_group", group_id=gids[c.group_id]):
                records += int(store.read("query/count_derived", group_id=gids[c.group_id])[0]["group_count"])
                continue
            delete_group(store, gids[c.group_id])
            renamed = rename(c, gids[c.group_id])
            ingest_conversations(store, [renamed], embedder)
            records += write_memory(store, embedder, renamed)
        n_msgs = sum(len(c.messages) for c in convs)
        print(f"setup: {len(convs)} networks, {n_msgs} messages, {records} derived records, "
              f"{len(questions)} questions ({time.perf_counter() - t:.1f} s)")

        rosters = {gid: read_roster(store, gid) for gid in gids.values()}
        with ScriptedLLM() as server:
            server.handler = scripted_handler(rosters)
            model = ChatModel(base_url=server.base_url, model=server.model, timeout_s=30, max_retries=0)
            settings = Settings(_env_file=None, s1_ask_enabled=not args.no_ask)
            ask(store, embedder, gids[questions[0].group_id], questions[0].question, model=model, settings=settings)
            rows = []
            for q in questions:
                before = len(server.chat_requests)
                t0 = time.perf_counter()
                r = ask(store, embedder, gids[q.group_id], q.question, model=model, settings=settings)
                wall = time.perf_counter() - t0
                bodies = server.chat_requests[before:]
                chars = {}
                for b in bodies:
                    system = b["messages"][0]["content"]
                    stage = next((s for s, m in MARKERS.items() if m in system), "?")
                    if stage == "select" and "rerank" in r.usage and stage in chars:
                        stage = "rerank"
                    chars[stage] = chars.get(stage, 0) + sum(len(m["content"]) for m in b["messages"])
                model_s = sum(u.model_s for u in r.usage.values())
                rows.append({
                    "id": q.id, "category": q.category, "wall_s": wall, "non_model_s": wall - model_s,
                    "stages": r.non_model_s(), "s2_parts": r.s2_timings_s, "calls": r.model_calls,
                    "tokens": {k: v.prompt_tokens for k, v in r.usage.items()},
                    "est_tokens": {k: v // 4 for k, v in chars.items()},
                    "rows": len(r.rows), "excerpts": len(r.excerpts), "records": len(r.record_ids),
                })
            model.close()
    finally:
        if not args.keep:
            for gid in gids.values():
                delete_group(store, gid)
        driver.close()

    print(f"\nper question (n = {len(rows)}), ASK {'off' if args.no_ask else 'on (Sufficiency always asks)'}:")
    print("stage          non-model ms: mean    p50    p95 | model calls/q | prompt tokens/q (words; est. 4 ch/tok)")
    for stage in STAGES:
        vals = [r["stages"].get(stage) for r in rows if stage in r["stages"]]
        if not vals:
            continue
        ms = [v * 1000 for v in vals]
        usage_key = stage if stage in ("project", "select", "sufficiency", "rerank", "answer") else None
        calls = tok = est = ""
        if usage_key:
            calls = f"{sum(1 for r in rows if usage_key in r['tokens']) / len(rows):.2f}"
            tok = f"{statistics.mean(r['tokens'].get(usage_key, 0) for r in rows):.0f}"
            est = f"{statistics.mean(r['est_tokens'].get(usage_key, 0) for r in rows):.0f}"
        print(f"{stage:<14} {statistics.mean(ms):>20.1f} {pct(ms, .5):>6.1f} {pct(ms, .95):>6.1f} |"
              f" {calls:>13} | {tok:>6} ({est})")
    parts = sorted({k for r in rows for k in r["s2_parts"]}, key=lambda k: list(rows[0]["s2_parts"]).index(k)
                   if k in rows[0]["s2_parts"] else 99)
    print("  s2 parts (ms, mean/p95): " + ", ".join(
        f"{k.removeprefix('s2_')} {statistics.mean(r['s2_parts'].get(k, 0) for r in rows) * 1000:.1f}/"
        f"{pct([r['s2_parts'].get(k, 0) * 1000 for r in rows], .95):.1f}" for k in parts))
    non_model = [r["non_model_s"] * 1000 for r in rows]
    print(f"\nnon-model part of ask: p50 {pct(non_model, .5):.1f} ms, p95 {pct(non_model, .95):.1f} ms, "
          f"mean {statistics.mean(non_model):.1f} ms, max {max(non_model):.1f} ms")
    print(f"model calls per question: {statistics.mean(r['calls'] for r in rows):.2f} "
          f"(min {min(r['calls'] for r in rows)}, max {max(r['calls'] for r in rows)})")
    total_tok = [sum(r["tokens"].values()) for r in rows]
    print(f"prompt tokens per question (scripted server word counts): mean {statistics.mean(total_tok):.0f}, "
          f"p95 {pct(total_tok, .95):.0f}")
    print(f"rows per question: mean {statistics.mean(r['rows'] for r in rows):.1f}; excerpts: mean "
          f"{statistics.mean(r['excerpts'] for r in rows):.1f}; records shown: mean "
          f"{statistics.mean(r['records'] for r in rows):.1f}")
    print("\njson:", json.dumps({"p50_ms": pct(non_model, .5), "p95_ms": pct(non_model, .95), "n": len(rows)}))


if __name__ == "__main__":
    main()
