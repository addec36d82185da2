"""Store-side latency of the System 1 recall pool against the plain fused search, interleaved.

Usage:
    .venv/bin/python bench/bench_recall.py [--data ../shared/data] [--repeat 2] [--bench socialmem|locomo]
        [--limit N]

For every SocialMemBench question of the staged networks (``--bench locomo``: the first
``--limit`` questions of each LoCoMo conversation; groups ingested beforehand, e.g. by
bench/eval_retrieval.py), runs the plain fulltext+dense RRF search (``search_messages``, 40) and
the recall pool (``recall_pool``, 40: group-local BM25, person and time anchors) with the
recipe before the dense context window (issue-aware query and neighbour smoothing, RRF
constant 60), with the product's recipe without the learned tail (``learned.tail_places=0``),
the eighth round's (the head without the sentence ranking, ``learned.head_sentences=False``)
and the product's recipe (``SPEAKERMEM_POOL``), one after the other, so all see the same
load; all share one GroupCache, as a server's process does.
The question's and the issue's vectors are encoded once up front, as ``ask`` does, so only
store-side work and fusion are timed. Prints p50/p95 of each.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--bench", choices=("socialmem", "locomo"), default="socialmem")
    ap.add_argument("--limit", type=int, default=0, help="questions per group (0: all)")
    args = ap.parse_args()
    from graphmem.core.config import get_settings
    from graphmem.store.db import Store, open_driver
    from graphmem.core.embed import Embedder
    from graphmem.eval.benchmarks import load_bench, question_text
    from graphmem.query.pipeline import BatchedEmbedder
    from graphmem.query.project import fallback_projection
    from graphmem.recall.cache import GroupCache
    from graphmem.recall.pool import recall_pool
    from graphmem.recall.recipe import SPEAKERMEM_POOL
    from graphmem.verbatim.roster import read_roster
    from graphmem.recall.search import search_messages

    store = Store(open_driver(get_settings()))
    base = Embedder.from_settings(get_settings())
    folder = {"socialmem": "socialmembench/networks", "locomo": "locomo/locomo10.json"}[args.bench]
    data = load_bench(args.bench, args.data / folder)
    old: list[float] = []
    landed: list[float] = []
    no_tail: list[float] = []
    new: list[float] = []
    eighth: list[float] = []
    before = SPEAKERMEM_POOL.evolve(dense={"context_share": 0.0}, fusion={"rrf_k": 60, "tail_rrf_k": None},
                                    learned={"tail_places": 0, "head_sentences": False})
    head_only = SPEAKERMEM_POOL.evolve(learned={"tail_places": 0, "head_sentences": False})
    plain_head = SPEAKERMEM_POOL.evolve(learned={"head_sentences": False})
    cache = GroupCache()
    for unit in data.units:
        roster = read_roster(store, unit.group_id)
        for q in unit.questions[: args.limit or None]:
            text, _ = question_text(q)
            projection = fallback_projection(text, roster)
            emb = BatchedEmbedder(base)
            emb.prefetch([text, projection.issue])  # ask encodes both in one batch
            for _ in range(args.repeat):
                t = time.perf_counter()
                search_messages(store, emb, unit.group_id, text, k=40, pool_n=40, cache=cache)
                old.append(time.perf_counter() - t)
                t = time.perf_counter()
                recall_pool(store, emb, unit.group_id, text, 40, roster=roster, projection=projection,
                            recipe=before, cache=cache)
                landed.append(time.perf_counter() - t)
                t = time.perf_counter()
                recall_pool(store, emb, unit.group_id, text, 40, roster=roster, projection=projection,
                            recipe=head_only, cache=cache)
                no_tail.append(time.perf_counter() - t)
                t = time.perf_counter()
                recall_pool(store, emb, unit.group_id, text, 40, roster=roster, projection=projection,
                            recipe=plain_head, cache=cache)
                eighth.append(time.perf_counter() - t)
                t = time.perf_counter()
                recall_pool(store, emb, unit.group_id, text, 40, roster=roster, projection=projection, cache=cache)
                new.append(time.perf_counter() - t)
    for name, v in (("fused search", old), ("pool, no context window", landed), ("pool, no learned tail", no_tail),
                    ("pool, eighth round", eighth), ("pool, default", new)):
        v.sort()
        print(f"{name:26s} p50 {1000 * v[len(v) // 2]:.0f} ms  p95 {1000 * v[int(0.95 * len(v))]:.0f} ms  (n={len(v)})")


if __name__ == "__main__":
    main()
