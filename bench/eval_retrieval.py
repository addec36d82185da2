"""Evidence recall@k of graphmem's System 1 pool and the BM25 / Embed baselines, no model.

Usage:
    .venv/bin/python bench/eval_retrieval.py [--data ../shared/data] [--out runs/retrieval]
        [--benches locomo,socialmem] [--systems bm25,embed,speakermem] [--fresh]

For each benchmark and system this runs ``graphmem eval run`` with no answer model configured
(GRAPHMEM_LLM_* unset for the process), so every question is retrieved only: LoCoMo's 1,986
questions (recall over the 1,535 non-adversarial questions with valid evidence) and the
SocialMemBench anchors of the 10 staged networks. graphmem uses its natural groups
(conv-26, grp_0d1e2f3a, ...; ingested when missing, idempotent) and its recall pool without a
model: the fused fulltext+vector order cut to top-10 - the System 1 pool. BM25 and Embed index
single messages (top-10). Prints recall@1/5/10 and hit@10 and the wall time of each run, then
writes the combined report into --out. --fresh deletes earlier records of these runs first.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

DATA = {"locomo": "locomo/locomo10.json", "socialmem": "socialmembench/networks"}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data")
    ap.add_argument("--out", type=Path, default=Path("runs/retrieval"))
    ap.add_argument("--benches", default="locomo,socialmem")
    ap.add_argument("--systems", default="bm25,embed,speakermem")
    ap.add_argument("--fresh", action="store_true")
    args = ap.parse_args()
    for var in ("GRAPHMEM_LLM_BASE_URL", "GRAPHMEM_LLM_MODEL", "GRAPHMEM_JUDGE_BASE_URL", "GRAPHMEM_JUDGE_MODEL",
                "GRAPHMEM_WRITER_BASE_URL", "GRAPHMEM_WRITER_MODEL"):
        os.environ.pop(var, None)
    from graphmem.cli.eval import _execute
    from graphmem.config import get_settings
    from graphmem.eval.report import summarize, write_report

    get_settings.cache_clear()
    settings = get_settings()
    if settings.llm_base_url or settings.llm_model:
        sys.exit("an answer model is configured (e.g. in .env); this benchmark needs none")
    rows = []
    for bench in args.benches.split(","):
        for system in args.systems.split(","):
            out = args.out / bench / system
            if args.fresh and out.exists():
                shutil.rmtree(out)
            t = time.perf_counter()
            outcome = _execute(
                bench=bench, data=args.data / DATA[bench], system=system, questions=None, ablate=None,
                no_ask=False, s1_k=None, s2_k=None, recall_n=None, limit=None, units=None, concurrency=1,
                group_prefix="", out_dir=out, settings=settings, quiet=True,
            )
            wall = time.perf_counter() - t
            s = summarize(out)
            rows.append((bench, system, s, outcome, wall))
            r = s.recall
            print(f"{bench:9s} {system:10s} scored {s.recall_scored:5d}  "
                  + "  ".join(f"R@{k} {100 * r[k]['recall']:5.1f}" for k in sorted(r, key=int))
                  + f"  hit@10 {100 * r['10']['hit']:5.1f}  ({outcome.done} new, {outcome.skipped} done before; "
                  f"wall {wall:.1f} s, retrieval p50 {s.latency_ms.get('retrieve_p50', 0):.0f} ms)", flush=True)
    report, _ = write_report(args.out, n_resamples=settings.eval_bootstrap_resamples, seed=settings.eval_bootstrap_seed)
    print(f"report: {report}")


if __name__ == "__main__":
    main()
