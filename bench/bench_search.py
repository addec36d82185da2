"""System 1 retrieval quality and latency without any language model.

Usage:
    .venv/bin/python bench/bench_search.py [--data ../shared/data] [--k 10] [--limit N]

Needs the benchmark groups ingested first (bench/bench_ingest.py). For LoCoMo it scores every
question with valid evidence, adversarial ones (category 5) excluded; for SocialMemBench the
evidence anchors. Prints recall@k and hit@k for fulltext only, vector only and the fused pool
(reciprocal-rank fusion), and p50/p95 latency of the hybrid search call.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from graphmem.core.config import get_settings
from graphmem.store.db import Store, open_driver
from graphmem.core.embed import Embedder
from graphmem.eval.metrics import mean_recall_at_k
from graphmem.recall.search import search_messages
from loaders import load_conversations, load_questions

MODES = ("fulltext", "vector", "hybrid")


def pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1] if len(values) > 1 else values[0]


def evaluate(name: str, store: Store, embedder: Embedder, questions, valid: dict[str, set[str]], k: int, pool: int) -> None:
    runs = {m: [] for m in MODES}
    latency: list[float] = []
    for q in questions:
        for mode in MODES:
            t = time.perf_counter()
            hits = search_messages(store, embedder, q.group_id, q.question, k=k, pool_n=pool, mode=mode)
            if mode == "hybrid":
                latency.append(time.perf_counter() - t)
            runs[mode].append(([h.id for h in hits], [e for e in q.evidence_ids if e in valid[q.group_id]]))
    print(f"\n== {name}: {len(questions)} questions, k={k}, recall pool n={pool}")
    for mode in MODES:
        s = mean_recall_at_k(runs[mode], k)
        print(f"  {mode:9s} recall@{k} {s.recall:.3f}  hit@{k} {s.hit:.3f}  (scored {s.n_scored}, skipped {s.n_skipped})")
    ms = [x * 1000 for x in latency]
    print(f"  hybrid search latency: p50 {pct(ms, 50):.1f} ms, p95 {pct(ms, 95):.1f} ms (incl. query embedding)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data")
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--pool", type=int, default=40)
    ap.add_argument("--limit", type=int, default=0, help="questions per benchmark (0 = all)")
    args = ap.parse_args()
    driver = open_driver(get_settings())
    store = Store(driver)
    embedder = Embedder.from_settings(get_settings())
    embedder.encode(["warm-up"])

    locomo = args.data / "locomo" / "locomo10.json"
    valid = {c.group_id: {m.id for m in c.messages} for c in load_conversations(locomo, "locomo")}
    qs = [q for q in load_questions(locomo, "locomo") if q.category != "5" and any(e in valid[q.group_id] for e in q.evidence_ids)]
    evaluate("LoCoMo (non-adversarial, valid evidence)", store, embedder, qs[: args.limit or None], valid, args.k, args.pool)

    social = args.data / "socialmembench" / "networks"
    valid = {c.group_id: {m.id for m in c.messages} for c in load_conversations(social, "socialmem")}
    qs = [q for q in load_questions(social, "socialmem") if any(e in valid[q.group_id] for e in q.evidence_ids)]
    evaluate("SocialMemBench evidence anchors", store, embedder, qs[: args.limit or None], valid, args.k, args.pool)
    driver.close()


if __name__ == "__main__":
    main()
