"""Evidence recall@k of graphmem's System 1 pool and the BM25 / Embed baselines, no model.

Usage:
    .venv/bin/python bench/eval_retrieval.py [--data ../shared/data] [--out runs/retrieval]
        [--benches locomo,socialmem] [--systems bm25,embed,speakermem] [--recipes speakermem,...] [--fresh]

For each benchmark and system this runs ``graphmem eval run`` with no answer model configured
(GRAPHMEM_LLM_* unset for the process), so every question is retrieved only: LoCoMo's 1,986
questions (recall over the 1,535 non-adversarial questions with valid evidence) and the
SocialMemBench anchors of the 10 staged networks. graphmem uses its natural groups
(conv-26, grp_0d1e2f3a, ...; ingested when missing, idempotent) and its recall pool without a
model: the System 1 recall pool (group-local BM25 + dense + person/time anchors, see
docs/query.md), whose first 10 are the excerpts. BM25 and Embed index single messages as the
paper runs them (top-10 to the answerer; ranked 40 deep for recall@40). Prints, per benchmark,
system and category, recall@1/5/10/40 and hit@10, and the retrieval latency p50/p95 (the whole
retrieval of one question; graphmem's also per stage), the composed evidence's tokens and
recall at evidence budgets (the recall-vs-tokens curve), then writes the combined report into
--out. --fresh deletes earlier records of these runs first.

--recipes runs graphmem once per named recall recipe (graphmem.recall.recipe.RECIPE_VARIANTS:
``speakermem`` is the product's, each ``no-...`` turns one stage off; the ablation table of
docs/lab/recall-rounds.md), each into its own run folder (``speakermem`` or
``speakermem-recipe-NAME``); the store is shared, so only the first run ingests.
"""

from __future__ import annotations

import argparse
import json
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
    ap.add_argument("--recipes", default="speakermem",
                    help="comma-separated recall recipe names for --systems speakermem (RECIPE_VARIANTS)")
    ap.add_argument("--fresh", action="store_true")
    args = ap.parse_args()
    for var in ("GRAPHMEM_LLM_BASE_URL", "GRAPHMEM_LLM_MODEL", "GRAPHMEM_JUDGE_BASE_URL", "GRAPHMEM_JUDGE_MODEL",
                "GRAPHMEM_WRITER_BASE_URL", "GRAPHMEM_WRITER_MODEL"):
        os.environ.pop(var, None)
    from graphmem.cli.eval import execute
    from graphmem.core.config import get_settings
    from graphmem.core.errors import InvalidInputError
    from graphmem.eval.report import summarize, write_report
    from graphmem.eval.runner import ERRORS_FILE, read_records

    get_settings.cache_clear()
    settings = get_settings()
    if settings.llm_base_url or settings.llm_model:
        sys.exit("an answer model is configured (e.g. in .env); this benchmark needs none")
    rows = []
    runs = [(system, recipe) for system in args.systems.split(",")
            for recipe in (args.recipes.split(",") if system == "speakermem" else [None])]
    for bench in args.benches.split(","):
        for system, recipe in runs:
            name = system if recipe in (None, "speakermem") else f"{system}-recipe-{recipe}"
            out = args.out / bench / name
            if args.fresh and out.exists():
                shutil.rmtree(out)
            t = time.perf_counter()
            try:
                outcome = execute(
                    bench=bench, data=args.data / DATA[bench], system=system, questions=None, ablate=None,
                    no_ask=False, s1_k=None, s2_k=None, recall_n=None, limit=None, units=None, concurrency=1,
                    group_prefix="", out_dir=out, settings=settings, quiet=True, recipe=recipe,
                )
            except InvalidInputError as e:
                if getattr(e, "field", None) != "out":
                    raise
                sys.exit(f"{e}\n(--fresh runs it again from the start)")
            wall = time.perf_counter() - t
            s = summarize(out)
            rows.append((bench, name, s, outcome, wall))
            print(f"{bench} / {name}: {outcome.done} new, {outcome.skipped} done before, wall {wall:.1f} s",
                  flush=True)
            if outcome.failed:  # e.g. a store embedded by another model: say so, not an empty table
                first = (out / ERRORS_FILE).read_text(encoding="utf-8").splitlines()[0]
                print(f"  {outcome.failed} question(s) FAILED, see {out / ERRORS_FILE}; the first: "
                      f"{json.loads(first)['error']}", flush=True)
            print_table(bench, name, read_records(out))
    report, _ = write_report(args.out, n_resamples=settings.eval_bootstrap_resamples, seed=settings.eval_bootstrap_seed)
    print(f"report: {report}")


KS = ("1", "5", "10", "40")


def _pct(values: list[float], q: float) -> float:
    v = sorted(values)
    return v[min(len(v) - 1, int(q * len(v)))] if v else 0.0


def print_table(bench: str, system: str, records: list) -> None:
    """Recall@1/5/10/40 and hit@10 per category (and all), retrieval p50/p95 in ms."""
    from graphmem.eval.benchmarks import CATEGORY_ORDER

    scored = [r for r in records if r.recall_scored]
    cats = [c for c in CATEGORY_ORDER.get(bench, []) if any(r.category == c for r in scored)]
    cats += sorted({r.category for r in scored} - set(cats))
    print(f"  {'category':12s} {'n':>5s} " + " ".join(f"{'R@' + k:>6s}" for k in KS) + f" {'hit@10':>6s}")
    for cat in [*cats, "all"]:
        recs = scored if cat == "all" else [r for r in scored if r.category == cat]
        if not recs:
            continue
        vals = [sum(r.recall.get(k) or 0.0 for r in recs) / len(recs) for k in KS]
        hit = sum(r.hit.get("10") or 0.0 for r in recs) / len(recs)
        print(f"  {cat:12s} {len(recs):5d} " + " ".join(f"{100 * v:6.1f}" for v in vals) + f" {100 * hit:6.1f}")
    lat = [1000 * r.latency_s.get("retrieve", 0.0) for r in records]
    line = f"  retrieval p50 {_pct(lat, 0.5):.0f} ms, p95 {_pct(lat, 0.95):.0f} ms"
    stages = sorted({k for r in records for k in r.timings_s if k not in ("retrieve", "answer")})
    parts = []
    for st in stages:
        v = [1000 * r.timings_s[st] for r in records if st in r.timings_s]
        parts.append(f"{st} {_pct(v, 0.5):.0f}/{_pct(v, 0.95):.0f}")
    if parts:
        line += "; per stage p50/p95 ms: " + ", ".join(parts)
    print(line, flush=True)
    sized = [r.evidence_tokens for r in records if r.evidence_tokens]
    if sized:
        from graphmem.core.tokens import TOKENIZER

        cells = []
        for part in ("verbatim", "structured", "question", "total"):
            v = [float(t.get(part, 0)) for t in sized]
            cells.append(f"{part} {sum(v) / len(v):.0f}/{_pct(v, 0.95):.0f}")
        print(f"  composed evidence tokens mean/p95 ({TOKENIZER}): " + ", ".join(cells), flush=True)
    from graphmem.eval.report import token_curve

    curve = token_curve(records)
    if curve:
        print("  recall at composed-evidence budgets (recall / mean excerpts): " + ", ".join(
            f"<= {b} tokens {100 * v['recall']:.1f} / {v['excerpts']:.1f}" for b, v in curve.items()), flush=True)


if __name__ == "__main__":
    main()
